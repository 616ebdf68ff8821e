import { dbFaultsSuite, FAULTS_FAST } from "../support/suites/db-faults.js";

// One 1.2 s cut under load (MySQL only); test/chaos/db-faults.chaos.ts runs 8 and flaps.
dbFaultsSuite(FAULTS_FAST);
