import { badInputSuite } from "../support/fuzz/suite.js";

// 13 times the npm test run: about 9,000 generated requests.
badInputSuite(13);
