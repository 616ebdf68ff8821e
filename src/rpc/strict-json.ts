/**
 * Connect's JSON options: a fatal decoder refuses bytes that are not UTF-8
 * (`invalid_argument`) where the default would store U+FFFD the client never sent.
 */
export const STRICT_JSON_OPTIONS = {
  // Connect's default, stated: a newer client's fields are no error.
  ignoreUnknownFields: true,
  textDecoder: new TextDecoder("utf-8", { fatal: true }),
};
