/**
 * The one market the sandbox simulates: USDT bought with BRL, delivered on Tron. The addresses are fixed,
 * well-formed Tron addresses so that clients validating their shape accept them.
 */
export const SYMBOL = 'USDTBRL';
export const CRYPTO_CURRENCY = 'USDT';
export const FIAT_CURRENCY = 'BRL';
export const NETWORK = 'tron';
export const HOT_WALLET_ADDRESS = 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE';
export const CLIENT_WALLET_ADDRESS = 'TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7';
/** Tron block height around the time the sandbox was written; only needs to look plausible and grow. */
export const FIRST_BLOCK_NUMBER = 61_000_000;
