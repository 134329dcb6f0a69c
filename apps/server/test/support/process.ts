export { freePort, type ServerProcess, spawnServer } from "@petstore/test-support"
