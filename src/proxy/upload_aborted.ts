/**
 * The reason a server aborts a request's signal with when its client broke
 * the upload off: the proxy then counts the request as a disconnect in phase
 * `upload`, whatever it was doing. It lives with the proxy, which reads it,
 * rather than with the server that raises it, so that the proxy stays a Web
 * handler any server can run and never imports a server.
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
