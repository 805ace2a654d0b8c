import { FindingReport } from "./findings";
import { Plan } from "../plan/planModel";

/** What `cidr-migration report` renders: the plan, and what preflight and (after `up`) verify found. */
export interface ReportInput {
  plan: Plan;
  /** `cidr-migration preflight --json`, when given. */
  preflight?: FindingReport;
  /** `cidr-migration verify --json` after `pulumi up`, when given. */
  verify?: FindingReport;
  /** Where the plan came from, e.g. "stack prod" or "plan.json". */
  source: string;
  /** When the report was made (ISO 8601); passed in so rendering stays pure. */
  generatedAt: string;
}
