import { badInputSuite } from "../support/fuzz.js";

// Ten times the npm test run: about 10,000 generated requests.
badInputSuite(10);
