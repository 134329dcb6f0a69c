import { Layer } from "effect"
import { Quota } from "../src/quota/Quota.ts"
import { redisSuiteOptions, testRedisQuotaStore } from "./support/layers.ts"
import { describeQuota, quotaConfig } from "./support/quotaSuite.ts"

// quota.test.ts's suite on a Redis Cluster (three primaries, three replicas, each a redis-server process): a process
// cluster, so in the system lane; the other stores run it in the fast lane.
describeQuota([{
  name: "redis store on a Cluster",
  options: redisSuiteOptions(),
  layer: Quota.layer.pipe(Layer.provide(testRedisQuotaStore("cluster")), Layer.provide(quotaConfig))
}])
