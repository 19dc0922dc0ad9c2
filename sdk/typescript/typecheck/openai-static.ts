// (a) The SDK's return type for format=openai is accepted, with no cast, by
// the openai package's request type. Compiled by `tsc --strict` (npm run build).
import type { ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import OpenAI from "openai";
import type { Client } from "../src/index.js";

export async function assembleThenCall(promptd: Client, openai: OpenAI): Promise<string | null> {
  const { body } = await promptd.assemble("support", "prod", { userId: "u1", variables: { persona: "Ada" } }, "openai");
  const params: ChatCompletionCreateParamsNonStreaming = body;
  const completion = await openai.chat.completions.create(params);
  return completion.choices[0]?.message.content ?? null;
}

export async function plainIsNotARequestBody(promptd: Client): Promise<void> {
  const { body } = await promptd.assemble("support", "prod", { variables: {} });
  // @ts-expect-error the plain format carries `model` as an object and extra keys
  const params: ChatCompletionCreateParamsNonStreaming = body;
  console.log(params);
}
