/** What is stored in Redis under `<prefix>:{<namespace>:<key>}:response`. */
export interface RecordedResponse {
  /** Fingerprint of the request that produced the response ("" when fingerprints are off). */
  readonly fingerprint: string;
  readonly status: number;
  /** The stored headers, lower-case names, in response order. */
  readonly headers: readonly (readonly [string, string])[];
  /** The body in base64, or null when it exceeded the cap and was not stored. */
  readonly body: string | null;
}

/** The header every replayed response carries (Stripe's name for it). */
export const REPLAY_HEADER = "idempotent-replayed";
/** Set on replays whose body exceeded the cap: the body is empty. */
export const BODY_OMITTED_HEADER = "edgelock-replay-body";

// A leading tag that JSON.parse rejects: @upstash/redis parses string replies as JSON when it
// can, which would turn the record into an object (or a number) on the way back.
const TAG = "edgelock-response/1 ";

export function encodeRecord(record: RecordedResponse): string {
  return TAG + JSON.stringify(record);
}

/** The record, or null when `raw` is not one (another writer's value under our key). */
export function decodeRecord(raw: unknown): RecordedResponse | null {
  if (typeof raw !== "string" || !raw.startsWith(TAG)) return null;
  try {
    const value: unknown = JSON.parse(raw.slice(TAG.length));
    return isRecord(value) ? value : null;
  } catch {
    return null;
  }
}

function isRecord(value: unknown): value is RecordedResponse {
  if (typeof value !== "object" || value === null) return false;
  const { fingerprint, status, headers, body } = value as Record<string, unknown>;
  return (
    typeof fingerprint === "string" &&
    typeof status === "number" &&
    Array.isArray(headers) &&
    headers.every(
      (pair) =>
        Array.isArray(pair) &&
        pair.length === 2 &&
        typeof pair[0] === "string" &&
        typeof pair[1] === "string",
    ) &&
    (body === null || typeof body === "string")
  );
}

/** Captures `response` from a clone, reading at most `maxBodyBytes + 1` bytes of its body. */
export async function recordResponse(
  response: Response,
  fingerprint: string,
  headerNames: readonly string[],
  maxBodyBytes: number,
): Promise<RecordedResponse> {
  const headers: [string, string][] = [];
  for (const name of headerNames) {
    const value = response.headers.get(name);
    if (value !== null) headers.push([name, value]);
  }
  const bytes = await readUpTo(response.clone(), maxBodyBytes);
  return {
    fingerprint,
    status: response.status,
    headers,
    body: bytes === null ? null : toBase64(bytes),
  };
}

/** The stored response, answered again, marked as a replay. */
export function replayResponse(record: RecordedResponse): Response {
  const headers = new Headers();
  for (const [name, value] of record.headers) headers.append(name, value);
  headers.set(REPLAY_HEADER, "true");
  if (record.body === null) headers.set(BODY_OMITTED_HEADER, "omitted");
  const body =
    record.body === null || nullBodyStatus(record.status) ? null : fromBase64(record.body);
  return new Response(body, { status: record.status, headers });
}

function nullBodyStatus(status: number): boolean {
  return status === 204 || status === 205 || status === 304;
}

async function readUpTo(response: Response, maxBytes: number): Promise<Uint8Array | null> {
  if (response.body === null) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      // Not awaited: cancelling one branch of a tee settles only when the other one ends too.
      reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  // Chunks keep String.fromCharCode's argument list short.
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
