/**
 * Certificates for the TLS conformance tests, made with Debian's openssl:
 * self-signed, or signed by a private authority made alongside.
 */
import { strictEqual } from "node:assert/strict";
import { join } from "node:path";

const OPENSSL_MISSING =
  "This test needs openssl to make its certificates: install the Debian package openssl (apt-get install -y openssl)";

/** Runs openssl with `args`; fails the test with what openssl said. */
async function openssl(args: string[]): Promise<void> {
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command("openssl", {
      args,
      stdout: "null",
      stderr: "piped",
    }).output();
  } catch (error) {
    throw new Error(OPENSSL_MISSING, { cause: error });
  }
  strictEqual(output.code, 0, new TextDecoder().decode(output.stderr));
}

/** A self-signed certificate for 127.0.0.1, and its key, in `dir`. */
export async function selfSignedCertificate(
  dir: string,
): Promise<{ certFile: string; keyFile: string }> {
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  await openssl([
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "1",
    "-subj",
    "/CN=127.0.0.1",
    "-addext",
    "subjectAltName=IP:127.0.0.1",
    "-keyout",
    keyFile,
    "-out",
    certFile,
  ]);
  return { certFile, keyFile };
}

/** An authority, and a certificate for 127.0.0.1 it signed, in `dir`. */
export async function authoritySignedCertificate(dir: string) {
  const file = (name: string) => join(dir, name);
  await openssl([
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "1",
    "-subj",
    "/CN=incontext test authority",
    "-keyout",
    file("ca.key"),
    "-out",
    file("ca.pem"),
  ]);
  await openssl([
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    "/CN=127.0.0.1",
    "-keyout",
    file("key.pem"),
    "-out",
    file("leaf.csr"),
  ]);
  await Deno.writeTextFile(
    file("leaf.cnf"),
    "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
  );
  await openssl([
    "x509",
    "-req",
    "-in",
    file("leaf.csr"),
    "-CA",
    file("ca.pem"),
    "-CAkey",
    file("ca.key"),
    "-CAcreateserial",
    "-days",
    "1",
    "-extfile",
    file("leaf.cnf"),
    "-out",
    file("cert.pem"),
  ]);
  return {
    authority: file("ca.pem"),
    cert: await Deno.readTextFile(file("cert.pem")),
    key: await Deno.readTextFile(file("key.pem")),
  };
}
