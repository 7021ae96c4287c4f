/** Builds a chat request of roughly `bytes` bytes of JSON: an agent loop of varied turns. */
export function agentRequest(
  bytes: number,
  nonce = "",
): Record<string, unknown> {
  const messages: Record<string, unknown>[] = [
    { role: "system", content: `You are a coding agent. ${nonce}` },
  ];
  let size = 0;
  for (let turn = 0; size < bytes; turn++) {
    const text = `Turn ${turn}: read src/file_${turn}.ts and explain line ${
      turn * 7
    }. `.repeat(12);
    const message = turn % 3 === 2
      ? { role: "tool", tool_call_id: `call_${turn}`, content: text }
      : { role: turn % 3 === 0 ? "user" : "assistant", content: text };
    messages.push(message);
    size += JSON.stringify(message).length;
  }
  return { model: "Qwen/Qwen3-8B", max_tokens: 65536, messages };
}
