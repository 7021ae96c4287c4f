/**
 * The parts of the AI SDK's language-model contract the bridge reads,
 * declared here by shape: the bridge loads no module of the AI SDK, whose
 * own types (`LanguageModelV4CallOptions`, `LanguageModelMiddleware`,
 * `PrepareStepFunction`) are assignable to these.
 *
 * @module
 */

/** The fields of a language-model call (`LanguageModelV4CallOptions`) the bridge reads. */
export interface ModelCallParams {
  /** The prompt: system, user, assistant and tool messages with their parts. */
  readonly prompt: readonly unknown[];
  /** The caller's output cap. */
  readonly maxOutputTokens?: number | undefined;
  /** The tools, function tools with their JSON schema. */
  readonly tools?: readonly unknown[] | undefined;
  /** How the model may use the tools. */
  readonly toolChoice?:
    | { readonly type: string; readonly toolName?: string }
    | undefined;
  /** A JSON response format, when one is asked for. */
  readonly responseFormat?: { readonly type: string } | undefined;
  /** The call's own headers. */
  readonly headers?:
    | Readonly<Record<string, string | undefined>>
    | undefined;
  /** Aborts the call. */
  readonly abortSignal?: AbortSignal | undefined;
}

/** The model a middleware wraps: its id is the `model` the count names. */
export interface ModelLike {
  /** The model's id, such as `"Qwen/Qwen3-8B"`. */
  readonly modelId: string;
}

/** Provider metadata: one record of JSON values per provider. */
export type ProviderMetadataLike = Readonly<
  Record<string, Readonly<Record<string, unknown>>>
>;

/** The result of a generate call, as far as the bridge touches it. */
export interface GenerateResultLike {
  /** Metadata by provider; the bridge adds `incontext`. */
  readonly providerMetadata?: ProviderMetadataLike | undefined;
}

/** The result of a stream call: its parts, of which `finish` carries provider metadata. */
export interface StreamResultLike {
  /** The stream's parts. */
  readonly stream: ReadableStream<unknown>;
}

/** A language-model middleware, in the shape `wrapLanguageModel()` takes. */
export interface ModelMiddleware {
  /** The middleware contract this one follows. */
  readonly specificationVersion: "v4";
  /**
   * Budgets the call: its output cap, or the overflow.
   *
   * @param options The call's parameters and the model.
   * @returns The parameters with the cap set.
   */
  transformParams<P extends ModelCallParams>(options: {
    readonly type: "generate" | "stream";
    readonly params: P;
    readonly model: ModelLike;
  }): Promise<P>;
  /**
   * Adds the decision to the result's `providerMetadata.incontext`.
   *
   * @param options The call and its parameters.
   * @returns The result with the decision.
   */
  wrapGenerate<R extends GenerateResultLike>(options: {
    readonly doGenerate: () => PromiseLike<R>;
    readonly params: ModelCallParams;
  }): Promise<R>;
  /**
   * Adds the decision to the `providerMetadata.incontext` of the stream's `finish` part.
   *
   * @param options The call and its parameters.
   * @returns The stream with the decision.
   */
  wrapStream<S extends StreamResultLike>(options: {
    readonly doStream: () => PromiseLike<S>;
    readonly params: ModelCallParams;
  }): Promise<S>;
}
