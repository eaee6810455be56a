/** Sessions in console.sessions and sign-in attempts in console.login_attempts (ports SessionStore, AttemptStore). */
import type { Sql } from "@treasury/service-kit";
import type { AttemptStore, SessionStore } from "../usecases/ports.ts";
import { operatorOf } from "./operators.ts";

export function pgSessionStore(sql: Sql): SessionStore {
  return {
    async insert(s) {
      await sql`
        insert into console.sessions (id_hash, operator_id, csrf_token, created_at, last_seen_at, expires_at)
        values (${s.idHash}, ${s.operatorId}, ${s.csrfToken}, ${s.at}, ${s.at}, ${s.expiresAt})`;
    },
    async get(idHash) {
      const [row] = await sql`
        select s.id_hash, s.csrf_token, s.created_at as s_created_at, s.last_seen_at, s.expires_at,
               o.id, o.email, o.role, o.password_hash, o.created_at, o.disabled_at
        from console.sessions s join console.operators o on o.id = s.operator_id
        where s.id_hash = ${idHash}`;
      if (row === undefined) return undefined;
      return {
        idHash: row["id_hash"] as string,
        csrfToken: row["csrf_token"] as string,
        createdAt: row["s_created_at"] as Date,
        lastSeenAt: row["last_seen_at"] as Date,
        expiresAt: row["expires_at"] as Date,
        operator: operatorOf(row as never),
      };
    },
    async touch(idHash, at) {
      await sql`update console.sessions set last_seen_at = ${at} where id_hash = ${idHash}`;
    },
    async delete(idHash) {
      await sql`delete from console.sessions where id_hash = ${idHash}`;
    },
    async purgeExpired(before, limit) {
      const rows = await sql`
        delete from console.sessions where id_hash in (select id_hash from console.sessions where expires_at < ${before} limit ${limit})
        returning 1`;
      return rows.length;
    },
  };
}

export function pgAttemptStore(sql: Sql): AttemptStore {
  return {
    async record(a) {
      await sql`insert into console.login_attempts (email, succeeded, client_ip, at) values (${a.email}, ${a.succeeded}, ${a.clientIp}, ${a.at})`;
    },
    async failuresSince(email, since) {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from console.login_attempts
        where email = ${email} and not succeeded and at >= ${since}
          and at > coalesce((select max(at) from console.login_attempts where email = ${email} and succeeded), '-infinity')`;
      return row?.n ?? 0;
    },
  };
}

/** Sign-in attempts older than `before`, at most `limit`: the lockout reads only the last window's. */
export async function purgeLoginAttempts(sql: Sql, before: Date, limit: number): Promise<number> {
  const rows = await sql`
    delete from console.login_attempts where id in (select id from console.login_attempts where at < ${before} order by id limit ${limit})
    returning 1`;
  return rows.length;
}
