/**
 * The header names the service reads and writes, lower case as HTTP/2 sends
 * them, in one place, as connect-es keeps its own (protocol-grpc/headers.ts).
 */
export const HEADER_CONTENT_TYPE = "content-type";
export const HEADER_RETRY_AFTER = "retry-after";
export const HEADER_WWW_AUTHENTICATE = "www-authenticate";
export const HEADER_GRPC_STATUS = "grpc-status";
export const HEADER_GRPC_MESSAGE = "grpc-message";
export const HEADER_REQUEST_ID = "x-request-id";
export const HEADER_CONNECTION = "connection";
