-- 0028: the owner is a person with the owner's role (SPEC §26, ADR 76): one people
-- table, one kind of session, one sign-in. The owner's account moves into people
-- with its password hash (no new setup); its sessions end (admin_sessions goes).

ALTER TABLE people ADD COLUMN role TEXT NOT NULL DEFAULT 'person'
    CHECK (role IN ('person', 'owner'));

-- At most one owner: a second is a conflict that ON CONFLICT (role) WHERE role = 'owner'
-- DO NOTHING turns into "not created".
CREATE UNIQUE INDEX people_one_owner ON people (role) WHERE role = 'owner';

-- The owner set up before owners had names is called "owner"; should an invited
-- person hold that name already, "owner-" and the start of the new random id.
INSERT INTO people (id, name, password_hash, created, disabled, role)
SELECT fresh.id,
       CASE WHEN EXISTS (SELECT 1 FROM people WHERE name = 'owner')
            THEN 'owner-' || substr(fresh.id, 1, 8) ELSE 'owner' END,
       owner.password_hash, owner.created, NULL, 'owner'
FROM owner, (SELECT substr(lower(hex(randomblob(29))), 1, 57) AS id) AS fresh;

DROP TABLE admin_sessions;
DROP TABLE owner;
