import { RACES_FAST, racesSuite } from "../support/suites/races.js";

// Racing starts at npm test's scale; test/chaos/races.chaos.ts runs the same suite harder.
racesSuite(RACES_FAST);
