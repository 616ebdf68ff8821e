import { RACES_CHAOS, racesSuite } from "../support/suites/races.js";

// The races of test/reliability/races.test.ts, repeated and wider (test:chaos).
racesSuite(RACES_CHAOS);
