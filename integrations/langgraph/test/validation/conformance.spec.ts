// LangGraph's checkpoint conformance suite, unmodified, run the way its
// README documents for a Jest-compatible runner: validate(initializer) in a
// test file, here under vitest with globals (npm run test:validation). Its
// CLI (validate-checkpointer) cannot load an initializer in 1.1.1: its
// runner imports findPackageRoot, which import_utils does not export.
import { validate } from "@langchain/langgraph-checkpoint-validation";
import initializer from "./initializer.js";

validate(initializer);
