-- 0019: the owner is a person with the owner's role, as SQLite's 0028 (SPEC §26, ADR 76).
-- The owner's account moves into people with its password hash; its sessions end.

ALTER TABLE people ADD COLUMN role text NOT NULL DEFAULT 'person'
    CHECK (role IN ('person', 'owner'));

-- At most one owner, whatever the number of processes racing through setup.
CREATE UNIQUE INDEX people_one_owner ON people (role) WHERE role = 'owner';

-- A person's id is 57 lowercase hex digits; the owner set up before owners had
-- names is called "owner", or "owner-" and the start of its id when that is taken.
INSERT INTO people (id, name, password_hash, created, disabled, role)
SELECT fresh.id,
       CASE WHEN EXISTS (SELECT 1 FROM people WHERE name = 'owner')
            THEN 'owner-' || substr(fresh.id, 1, 8) ELSE 'owner' END,
       owner.password_hash, owner.created, NULL, 'owner'
FROM owner, (SELECT substr(md5(random()::text) || md5(random()::text), 1, 57) AS id) AS fresh;

DROP TABLE admin_sessions;
DROP TABLE owner;
