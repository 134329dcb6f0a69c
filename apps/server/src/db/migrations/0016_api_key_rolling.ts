/**
 * Rolling a key (README "Admin API"): the secret it had before the last roll
 * keeps working until `previous_secret_expires_at`. One column pair, so at
 * most two secrets of a key are ever live; a new roll overwrites it.
 */
export default {
  version: 16,
  name: "api_key_rolling",
  statements: [
    `ALTER TABLE api_keys ADD COLUMN previous_secret_hash text UNIQUE`,
    `ALTER TABLE api_keys ADD COLUMN previous_secret_expires_at timestamptz`,
    `ALTER TABLE api_keys ADD CHECK ((previous_secret_hash IS NULL) = (previous_secret_expires_at IS NULL))`
  ]
}
