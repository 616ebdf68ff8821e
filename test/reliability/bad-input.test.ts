import { badInputSuite } from "../support/fuzz/suite.js";

// Generated requests over REST, Connect and gRPC; test:chaos runs many more.
badInputSuite(1);
