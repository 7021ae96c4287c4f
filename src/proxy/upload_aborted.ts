/**
 * Why a request's signal aborted: its client broke the upload off. In the
 * proxy, which reads it, so that the server that raises it imports the proxy
 * and never the reverse.
 *
 * @module
 */

/** Why a request body ended early: the client broke its upload off. */
export class UploadAborted extends Error {
  override readonly name = "UploadAborted";
  constructor() {
    super("The client closed the connection before its request body was sent");
  }
}
