/**
 * Connect's JSON options for the service's routers: its default decoder puts
 * U+FFFD in place of bytes that are not UTF-8, and the service would store
 * text the client never sent; this one refuses them, and Connect answers
 * `invalid_argument`. Binary messages need nothing: protobuf-es checks the
 * UTF-8 of proto3 string fields itself.
 */
export const STRICT_JSON_OPTIONS = {
  // Connect's default, stated: a newer client's fields are no error.
  ignoreUnknownFields: true,
  textDecoder: new TextDecoder("utf-8", { fatal: true }),
};
