import { Layer } from "effect"
import { Quota } from "../src/quota/Quota.ts"
import { QuotaStore } from "../src/quota/QuotaStore.ts"
import { backends, suiteOptions } from "./support/databases.ts"
import { redisSuiteOptions, testDatabase, testRedisQuotaStore } from "./support/layers.ts"
import { describeQuota, quotaConfig } from "./support/quotaSuite.ts"

// The same suite on a Redis Cluster, six redis-server processes, is in quotaCluster.system.test.ts.
describeQuota([
  {
    name: "memory",
    layer: Quota.layer.pipe(Layer.provide(QuotaStore.memory), Layer.provide(quotaConfig)),
    options: {}
  },
  ...backends.map(({ name }) => ({
    name: `postgres store on ${name}`,
    options: suiteOptions(name),
    layer: Quota.layer.pipe(
      Layer.provide(QuotaStore.postgres),
      Layer.provide(testDatabase(name)),
      Layer.provide(quotaConfig)
    )
  })),
  {
    name: "redis store on a single server",
    options: redisSuiteOptions(),
    layer: Quota.layer.pipe(Layer.provide(testRedisQuotaStore("single")), Layer.provide(quotaConfig))
  }
])
