import { strict as assert } from "assert";
import { kubeApiError } from "../../../lib/serviceMove/kubeRest";
import { retryOnConflict } from "../../../lib/serviceMove/retryOnConflict";

const apiError = (status: number) => kubeApiError(status, "Reason", `status ${status}`, "PUT", "/api/v1/x");

describe("retryOnConflict", () => {
  it("runs the attempt again on 409 until it succeeds, and returns its value", async () => {
    let calls = 0;
    assert.equal(await retryOnConflict(5, async () => { if (++calls < 3) throw apiError(409); return "done"; }), "done");
    assert.equal(calls, 3);
  });

  it("gives up after the retries with the last conflict, and never retries another failure", async () => {
    let calls = 0;
    await assert.rejects(retryOnConflict(2, async () => { calls++; throw apiError(409); }), /status 409/);
    assert.equal(calls, 3, "one try and two retries");
    calls = 0;
    await assert.rejects(retryOnConflict(5, async () => { calls++; throw apiError(422); }), /status 422/);
    assert.equal(calls, 1);
  });

  it("retries the extra statuses it is given", async () => {
    let calls = 0;
    assert.equal(await retryOnConflict(5, async () => { if (++calls < 2) throw apiError(404); return calls; }, [404]), 2);
  });
});
