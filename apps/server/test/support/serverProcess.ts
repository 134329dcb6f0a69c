export {
  ADMIN_TOKEN,
  eventually,
  startServerProcess,
  type StartedProcess,
  tryConnect,
  waitForExit
} from "@petstore/test-support"
