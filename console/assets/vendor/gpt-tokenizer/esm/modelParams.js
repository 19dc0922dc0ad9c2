import { Cl100KBase } from "./encodingParams/cl100k_base.js";
import { O200KBase } from "./encodingParams/o200k_base.js";
import { O200KHarmony } from "./encodingParams/o200k_harmony.js";
import { P50KBase } from "./encodingParams/p50k_base.js";
import { P50KEdit } from "./encodingParams/p50k_edit.js";
import { R50KBase } from "./encodingParams/r50k_base.js";
//#region src/modelParams.ts
function getEncodingParams(encodingName, getMergeableRanks) {
	const mergeableBytePairRanks = getMergeableRanks(encodingName);
	switch (encodingName.toLowerCase()) {
		case "gpt2":
		case "r50k_base": return R50KBase(mergeableBytePairRanks);
		case "p50k_base": return P50KBase(mergeableBytePairRanks);
		case "p50k_edit": return P50KEdit(mergeableBytePairRanks);
		case "cl100k_base": return Cl100KBase(mergeableBytePairRanks);
		case "o200k_base": return O200KBase(mergeableBytePairRanks);
		case "o200k_harmony": return O200KHarmony(mergeableBytePairRanks);
		default: throw new Error(`Unknown encoding name: ${encodingName}`);
	}
}
//#endregion
export { getEncodingParams };

//# sourceMappingURL=modelParams.js.map