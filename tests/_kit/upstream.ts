/** A local OpenAI-compatible upstream on port 0 that records what it receives. */
export interface Upstream extends AsyncDisposable {
  readonly baseUrl: string;
  readonly received: {
    path: string;
    method: string;
    headers: Headers;
    text: string;
  }[];
}

export function serveUpstream(): Upstream {
  const received: Upstream["received"] = [];
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (request) => {
      const url = new URL(request.url);
      const text = await request.text();
      received.push({
        path: url.pathname,
        method: request.method,
        headers: request.headers,
        text,
      });
      const usage = { prompt_tokens: 7, completion_tokens: 1, total_tokens: 8 };
      if (url.pathname === "/v1/chat/completions") {
        return Response.json({
          id: "chatcmpl-1",
          object: "chat.completion",
          created: 1,
          model: "m",
          choices: [{
            index: 0,
            message: { role: "assistant", content: "ok" },
            finish_reason: "stop",
          }],
          usage,
        });
      }
      if (url.pathname === "/v1/completions") {
        return Response.json({
          id: "cmpl-1",
          object: "text_completion",
          created: 1,
          model: "m",
          choices: [{ index: 0, text: "ok", finish_reason: "stop" }],
          usage,
        });
      }
      if (url.pathname === "/v1/responses") {
        return Response.json({
          id: "resp_1",
          object: "response",
          created_at: 1,
          status: "completed",
          model: "m",
          output: [{
            type: "message",
            id: "msg_1",
            status: "completed",
            role: "assistant",
            content: [{ type: "output_text", text: "ok", annotations: [] }],
          }],
          usage: { input_tokens: 7, output_tokens: 1, total_tokens: 8 },
        });
      }
      return new Response(`not found: ${url.pathname}`, { status: 404 });
    },
  );
  return {
    baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
    received,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}
