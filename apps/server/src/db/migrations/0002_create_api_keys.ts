export default {
  version: 2,
  name: "create_api_keys",
  statements: [
    `CREATE TABLE api_keys (
      id text PRIMARY KEY,
      secret_hash text NOT NULL UNIQUE,
      name text NOT NULL,
      plan text NOT NULL CHECK (plan IN ('free', 'pro', 'business', 'enterprise')),
      per_minute integer CHECK (per_minute >= 1),
      per_day integer CHECK (per_day >= 1),
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz,
      CHECK ((plan = 'enterprise') = (per_minute IS NOT NULL AND per_day IS NOT NULL))
    )`
  ]
}
