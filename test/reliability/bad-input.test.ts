import { badInputSuite } from "../support/fuzz/suite.js";

// About 700 generated requests over REST, Connect and gRPC (45 batches per property);
// test:chaos runs 13 times more.
badInputSuite(1);
