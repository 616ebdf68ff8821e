import { badInputSuite } from "../support/fuzz.js";

// About 2,000 generated requests over REST, Connect and gRPC; test:chaos runs 20 times more.
badInputSuite(1);
