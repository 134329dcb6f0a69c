/** Roles of API keys (README "Orders"): every key issued before is a customer. */
export default {
  version: 7,
  name: "api_key_roles",
  statements: [
    `ALTER TABLE api_keys ADD COLUMN role text NOT NULL DEFAULT 'customer' CHECK (role IN ('customer', 'staff'))`
  ]
}
