declare namespace Cloudflare {
  interface Env {
    /** JSON list of { kind, url, token }: the local REST servers started by test/global-setup.ts. */
    EDGELOCK_TEST_SERVERS: string;
  }
}
