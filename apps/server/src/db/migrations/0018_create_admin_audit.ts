/**
 * The admin API's audit trail (README "Admin API"). Each row is written by the
 * statement that makes its change, so the two commit or roll back together.
 * `api_key_id` names no foreign key: the trail outlives the keys it tells of.
 * Bounded by the hourly sweep: 400 days, and at most a million rows.
 */
export default {
  version: 18,
  name: "create_admin_audit",
  statements: [
    `CREATE TABLE admin_audit (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      occurred_at timestamptz NOT NULL DEFAULT now(),
      action text NOT NULL,
      api_key_id text NOT NULL,
      changes jsonb NOT NULL,
      client_address text NOT NULL
    )`,
    `CREATE INDEX admin_audit_api_key_id_id ON admin_audit (api_key_id, id)`,
    `CREATE INDEX admin_audit_occurred_at ON admin_audit (occurred_at)`
  ]
}
