import type postgres from "postgres"

/** The pets every list benchmark reads: 10,000 over ten categories and the three statuses, as a shop's catalogue. */
export const insertListPets = (db: postgres.Sql) =>
  db`INSERT INTO pets (name, category_id, status)
    SELECT 'Pet ' || g, 1 + g % 10, (ARRAY['available', 'pending', 'sold'])[1 + g % 3] FROM generate_series(1, 10000) AS g`
