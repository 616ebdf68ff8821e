import { chaosFaults, dbFaultsSuite } from "../support/suites/db-faults.js";

// The outage suite of test/reliability/db-faults.test.ts, 8 seeded cuts and 2 s of flapping.
dbFaultsSuite(chaosFaults());
