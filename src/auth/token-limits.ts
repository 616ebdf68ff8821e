/** What a bearer token may be: read by the authenticator, named in its refusals' words. */

/** Longest `authorization` value looked at; longer ones are refused unread. */
export const MAX_HEADER_LENGTH = 8192;
/** Longest user id, in code points: practice_sessions.user_id is VARCHAR(255) in utf8mb4. */
export const MAX_SUBJECT_LENGTH = 255;
/** How far ahead of the service's clock a token's `iat` may be (another machine's clock). */
export const IAT_LEEWAY_SECONDS = 60;
