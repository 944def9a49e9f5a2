/** The signing secret `npm run dev` gives the Worker and send.ts signs with: local use only. */
export const DEV_SECRET = "whsec_local_development_only";
