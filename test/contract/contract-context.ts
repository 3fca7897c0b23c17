/** One answer as openapi-fetch returns it: the parsed body in `data` (2xx) or `error`. */
export interface ClientResult {
  response: Response;
  data?: unknown;
  error?: unknown;
}

/**
 * What the program written with the generated client (client-program.ts) is given by the
 * contract test, and tells it: the keys, the webhook receiver, every answer it got, and the
 * steps only the test can take (an operator's catalog change, stopping the catalog).
 */
export interface ContractContext {
  baseUrl: string;
  /** Keys made with the keys CLI, one per tier. */
  keys: { free: string; pro: string; enterprise: string };
  /** Where webhook deliveries go: the test's receiver. */
  receiverUrl: string;
  /** Every answer, under the operation it answers. */
  record(operationId: string, result: ClientResult): void;
  /** An operator adds, changes and deletes a tool; resolves once the three events arrived. */
  changeCatalog(): Promise<void>;
  /** Whether an event of this type has arrived. */
  received(type: string): boolean;
  /** Resolves once an event of this type has arrived. */
  waitForEvent(type: string): Promise<void>;
  /** The headers of a secret scanner's signature over a leak report's body. */
  leakReportHeaders(body: string): Record<string, string>;
  /** Stops the catalog service: the gateway answers for it. */
  stopCatalog(): Promise<void>;
}
