export { toHtml } from "./htmlReport.ts"
export {
  type ApiKey,
  type CheckResult,
  type CheckStatus,
  type Failure,
  type Plan,
  PLANS,
  type Summary,
  type SuiteResult,
  type Tag,
  Unreachable
} from "./model.ts"
export { formatResult, formatSummary, toJson, toJUnit } from "./report.ts"
export { InvalidKeys, InvalidOptions, type RefusedKey, runSuite, suite, type SuiteOptions } from "./suite.ts"
export type { WebhookOptions } from "./webhooks.ts"
