// The two engines side by side for the interop tests: jf through its CLI, llama.cpp through the
// node-llama-cpp bindings (its prebuilt CPU libraries), and the comparison of their greedy choices.
import {spawnSync} from "node:child_process";
import {join} from "node:path";
import {pathToFileURL} from "node:url";

export const env = {
  jf: process.env.JF_BIN,
  tool: process.env.JF_LLAMACPP_TOOL,
  libllama: process.env.JF_LIBLLAMA,
  shared: process.env.JF_SHARED,
  nodeModules: process.env.JF_NODE_MODULES,
  work: process.env.JF_TEST_OUTPUT,
};

// llama.cpp's llama_ftype numbers of the file types both quantizers write.
export const LLAMA_FTYPE = {f16: 1, bf16: 32, q8_0: 7, q4_0: 2, q4_1: 3, q5_0: 8, q5_1: 9, q2_k: 10, q3_k_s: 11,
  q3_k_m: 12, q3_k_l: 13, q4_k_s: 14, q4_k_m: 15, q5_k_s: 16, q5_k_m: 17, q6_k: 18, iq4_nl: 25, iq4_xs: 30};

function run(cmd, args, extraEnv = {}) {  // stdout; throws with stderr on failure
  const r = spawnSync(cmd, args, {encoding: "utf8", env: {...process.env, ...extraEnv}, maxBuffer: 64 << 20});
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (${r.status}):\n${r.stderr}`);
  return r.stdout;
}

export function jf(...args) { return run(env.jf, args); }

// llamacpp_tool (its quantizer and chat templates through libllama's C API) with `args`.
function llamaCppTool(...args) {
  const libDir = env.libllama.slice(0, env.libllama.lastIndexOf("/"));
  return run(env.tool, [env.libllama, ...args], {LD_LIBRARY_PATH: libDir});
}

export function quantizeWithLlamaCpp(input, output, type) {
  llamaCppTool("quantize", input, output, String(LLAMA_FTYPE[type]));
}

// llama.cpp's rendering of `messages` ([role, content] pairs) with its built-in template `name`, the
// assistant's opening appended.
export function chatWithLlamaCpp(name, messages) { return llamaCppTool("chat", name, ...messages.flat()); }

// jf's greedy continuation of `text`: {prompt_tokens, tokens}.
export function jfGreedy(model, text, n) {
  const out = jf("generate", "-m", model, "-p", text, "-n", String(n), "--ignore-eos", "--json", "-t", "2");
  return JSON.parse(out.trim().split("\n").pop());
}

export async function openLlamaCpp() {
  const url = pathToFileURL(join(env.nodeModules, "node-llama-cpp/dist/index.js")).href;
  const {getLlama} = await import(url);
  return getLlama({gpu: false, build: "never", logLevel: "error"});
}

// llama.cpp's tokens for `text` (BOS first when `prompt` starts with it), and its next-token distribution at every
// position of `forced` after `prompt`, as {top, pTop, forced, pForced}: its own greedy choice and the
// probability it gives the forced token. The KV cache is f32 and flash
// attention off, as jf computes by default, so that only the weights and activation rounding differ.
export async function llamaCppScores(llama, modelPath, {text, prompt, forced}) {
  const model = await llama.loadModel({modelPath});
  try {
    const withBos = prompt.length > 0 && prompt[0] === model.tokens.bos;
    const tokens = [...(withBos ? [model.tokens.bos] : []), ...model.tokenize(text)];
    const context = await model.createContext({contextSize: 512, threads: 2, flashAttention: false,
      experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32"});
    const sampling = {temperature: 1, topK: 0, topP: 1, minP: 0, yieldEogToken: true};
    const steps = context.getSequence().evaluateWithMetadata(prompt, {probabilities: true}, sampling);
    const scores = [];
    let step = await steps.next();
    for (const token of forced) {
      let top = -1;
      let pTop = -1;
      for (const [t, p] of step.value.probabilities) {
        if (p > pTop) [top, pTop] = [t, p];
      }
      scores.push({top, pTop, forced: token, pForced: step.value.probabilities.get(token) ?? 0});
      step = await steps.next(token);  // teacher forcing: llama.cpp reads jf's token next
    }
    await context.dispose();
    return {tokens, scores};
  } finally {
    await model.dispose();
  }
}

// How closely jf's greedy tokens follow llama.cpp: positions where both pick the same token, and the
// lowest ratio p(jf's token) / p(llama.cpp's top) (1 where they agree). A ratio near 1 is a near-tie that
// activation rounding may decide either way; far below 1, the two engines compute different models.
export function agreement(scores) {
  let same = 0;
  let worst = 1;
  let worstAt = -1;
  scores.forEach((s, i) => {
    if (s.top === s.forced) same++;
    const ratio = s.pForced / s.pTop;
    if (ratio < worst) [worst, worstAt] = [ratio, i];
  });
  return {positions: scores.length, same, worst, worstAt};
}
