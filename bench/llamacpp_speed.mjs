// llama.cpp's speed on a GGUF file, through node-llama-cpp's prebuilt CPU libraries (bench/vs_llamacpp.sh
// installs them and runs this beside jf): greedy decoding tokens/s, and the time of one forward of M tokens
// after a 64-token context (llama.cpp's batch path; it computes logits for no row there, jf's forward_cost
// for every row, so the comparison favours llama.cpp).
// Usage: node llamacpp_speed.mjs MODULES_DIR MODEL THREADS TOKENS MS REPS   (MS: e.g. 1,4,8,16)
import {join} from "node:path";
import {pathToFileURL} from "node:url";

const [modules, modelPath, threads, nTokens, msList, reps] = process.argv.slice(2);
const {getLlama} = await import(pathToFileURL(join(modules, "node-llama-cpp/dist/index.js")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath});
const context = await model.createContext({contextSize: 512, threads: Number(threads), batchSize: 64});
const sequence = context.getSequence();
const prompt = model.tokenize("Once upon a time");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function decodeTokensPerSecond() {
  await sequence.clearHistory();
  let n = 0;
  let start = 0;
  for await (const token of sequence.evaluate(prompt, {temperature: 0, yieldEogToken: true})) {
    void token;
    if (n === 0) start = performance.now();  // after the prompt's forward and the first token
    if (++n > Number(nTokens)) break;
  }
  return Number(nTokens) / ((performance.now() - start) / 1000);
}

async function forwardMs(m) {
  await sequence.clearHistory();
  const filler = Array.from({length: 64}, (_, i) => prompt[i % prompt.length]);
  await sequence.evaluateWithoutGeneratingNewTokens(filler);
  const times = [];
  for (let r = 0; r < Number(reps); r++) {
    const rows = filler.slice(0, m);
    const t0 = performance.now();
    await sequence.evaluateWithoutGeneratingNewTokens(rows);
    times.push(performance.now() - t0);
    await sequence.eraseContextTokenRanges([{start: 64, end: 64 + m}]);
  }
  return median(times);
}

const forward = {};
for (const m of msList.split(",").map(Number)) forward[m] = await forwardMs(m);
console.log(JSON.stringify({decode_tps: await decodeTokensPerSecond(), forward_ms: forward}));
process.exit(0);
