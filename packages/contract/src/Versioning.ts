/** The version segment (spec §9): the prefix of every path, and the end of every server URL in the OpenAPI document. */
export const API_BASE_PATH = "/v1"

/** The day `GET /pets/{petId}` is removed (spec §9). */
export const GET_PET_SUNSET = new Date("2030-12-05T00:00:00Z")
