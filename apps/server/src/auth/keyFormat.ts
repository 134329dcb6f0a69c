import { randomInt } from "node:crypto"
import { crc32 } from "node:zlib"

/**
 * The text of an API key (README "Key format"): `psk_`, 43 random base62
 * characters (256 bits), and the CRC-32 of those 43 characters in 6 base62
 * digits. The checksum lets a secret scanner tell a real key from look-alike
 * noise offline, as GitHub's tokens do; it is no secret and proves nothing
 * about the key being live.
 */
export const SECRET_PREFIX = "psk_"
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const RANDOM_LENGTH = 43
const CHECKSUM_LENGTH = 6

/** What scanners look for: the prefix and 49 base62 characters, the last 6 the checksum. */
export const KEY_PATTERN = /^psk_[0-9A-Za-z]{49}$/
/** Keys issued before the checksum: `psk_` and 256 random bits in base64url. They stay valid. */
const LEGACY_KEY_PATTERN = /^psk_[A-Za-z0-9_-]{43}$/

const base62 = (value: number, length: number) => {
  let text = ""
  for (let rest = value; rest > 0; rest = Math.floor(rest / 62)) text = BASE62[rest % 62] + text
  return text.padStart(length, "0")
}

export const checksumOf = (random: string) => base62(crc32(random), CHECKSUM_LENGTH)

export const newSecret = () => {
  let random = ""
  for (let i = 0; i < RANDOM_LENGTH; i++) random += BASE62[randomInt(62)]
  return `${SECRET_PREFIX}${random}${checksumOf(random)}`
}

/** A key of the current format whose checksum holds. */
export const hasValidChecksum = (text: string) =>
  KEY_PATTERN.test(text) &&
  checksumOf(text.slice(SECRET_PREFIX.length, -CHECKSUM_LENGTH)) === text.slice(-CHECKSUM_LENGTH)

/** Worth a lookup: a key with a valid checksum, or one issued before checksums. Anything else is refused unread. */
export const isKeyShaped = (text: string) => hasValidChecksum(text) || LEGACY_KEY_PATTERN.test(text)
