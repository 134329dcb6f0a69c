/** A key's last use (README "Admin API"), written by each process at most once a minute per key. */
export default {
  version: 17,
  name: "api_key_last_use",
  statements: [`ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz`]
}
