-- 0002: as migrations/postgres/0002: the invalidation-depth gauge counts live exact-head invalidation rows, so the partial
-- index on "I < S" (which PostgreSQL had to update on every fence change) goes on both backends.
DROP INDEX head_generations_uninvalidated;
