export default {
  version: 1,
  name: "create_pets",
  statements: [
    `CREATE TABLE pets (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
      category_id bigint NOT NULL CHECK (category_id >= 1),
      status text NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
      created_at timestamptz NOT NULL DEFAULT now()
    )`,
    // The status filter walks pages in id order too.
    `CREATE INDEX pets_status_id ON pets (status, id)`
  ]
}
