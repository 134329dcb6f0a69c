/*
 * k6 provides `console` in every context (https://grafana.com/docs/k6/latest/javascript-api/#console),
 * but @types/k6 does not declare it, and the DOM and Node libraries would bring in globals k6 lacks
 * (fetch, URL, process, …). Only the methods k6 documents are declared here.
 */
export {}

declare global {
  interface K6Console {
    log(...data: unknown[]): void
    info(...data: unknown[]): void
    warn(...data: unknown[]): void
    error(...data: unknown[]): void
    debug(...data: unknown[]): void
  }
  var console: K6Console
}
