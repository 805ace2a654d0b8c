// Mocha's spec reporter, closing with the plain line CI reads: "N passed, N failed" (", N skipped" when any).
"use strict";
const Mocha = require("mocha");

class SpecWithTotals extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const { passes, failures, pending } = this.stats;
      process.stdout.write(`${passes} passed, ${failures} failed${pending ? `, ${pending} skipped` : ""}\n`);
    });
  }
}

module.exports = SpecWithTotals;
