import createPets from "./0001_create_pets.ts"
import createApiKeys from "./0002_create_api_keys.ts"
import createQuotaUsage from "./0003_create_quota_usage.ts"
import quotaAdmitMany from "./0004_quota_admit_many.ts"
import createIdempotencyKeys from "./0005_create_idempotency_keys.ts"
import quotaWindowsOnlyMoveForward from "./0006_quota_windows_only_move_forward.ts"
import apiKeyRoles from "./0007_api_key_roles.ts"
import petVersions from "./0008_pet_versions.ts"
import createOrders from "./0009_create_orders.ts"
import quotaUsageExpires from "./0011_quota_usage_expires.ts"
import createEvents from "./0012_create_events.ts"
import createWebhooks from "./0013_create_webhooks.ts"
import webhookEndpointSlots from "./0014_webhook_endpoint_slots.ts"
import apiKeyExpiry from "./0015_api_key_expiry.ts"
import apiKeyRolling from "./0016_api_key_rolling.ts"
import apiKeyLastUse from "./0017_api_key_last_use.ts"
import createAdminAudit from "./0018_create_admin_audit.ts"

export interface Migration {
  /** Versions only grow; a released migration is never edited, a new one is added. */
  readonly version: number
  readonly name: string
  readonly statements: ReadonlyArray<string>
}

/**
 * In order of version. There is no version 10: the number was skipped when 11 landed, and versions only grow,
 * so no database holds a 10 and none will be written.
 */
export const migrations: ReadonlyArray<Migration> = [
  createPets,
  createApiKeys,
  createQuotaUsage,
  quotaAdmitMany,
  createIdempotencyKeys,
  quotaWindowsOnlyMoveForward,
  apiKeyRoles,
  petVersions,
  createOrders,
  quotaUsageExpires,
  createEvents,
  createWebhooks,
  webhookEndpointSlots,
  apiKeyExpiry,
  apiKeyRolling,
  apiKeyLastUse,
  createAdminAudit
]
