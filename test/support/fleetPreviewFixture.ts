// The real engine's events and saved plan of one sandbox preview (test/fixtures/fleet; see SOURCES.md).
import * as fs from "fs";
import * as path from "path";
import { EngineEventLike, UpdatePlanLike } from "../../lib/fleet/previewFromEvents";

const FIXTURES = path.join(__dirname, "..", "fixtures", "fleet");
export const PREVIEW_EVENTS = JSON.parse(fs.readFileSync(path.join(FIXTURES, "preview-events.json"), "utf8")) as EngineEventLike[];
export const PREVIEW_PLAN = JSON.parse(fs.readFileSync(path.join(FIXTURES, "preview-plan.json"), "utf8")) as UpdatePlanLike;
