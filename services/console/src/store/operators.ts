/** Operators in console.operators (port OperatorStore). */
import type { Sql } from "@treasury/service-kit";
import type { Role } from "../domain/roles.ts";
import type { Operator, OperatorStore } from "../usecases/ports.ts";

interface OperatorRow {
  id: string;
  email: string;
  role: string;
  password_hash: string;
  created_at: Date;
  disabled_at: Date | null;
}

export function operatorOf(r: OperatorRow): Operator {
  return { id: r.id, email: r.email, role: r.role as Role, passwordHash: r.password_hash, createdAt: r.created_at, disabledAt: r.disabled_at };
}

export function pgOperatorStore(sql: Sql): OperatorStore {
  return {
    async insert(o) {
      const rows = await sql<OperatorRow[]>`
        insert into console.operators (id, email, role, password_hash) values (${o.id}, ${o.email}, ${o.role}, ${o.passwordHash})
        on conflict (email) do nothing
        returning *`;
      return rows[0] === undefined ? undefined : operatorOf(rows[0]);
    },
    async byEmail(email) {
      const [row] = await sql<OperatorRow[]>`select * from console.operators where email = ${email}`;
      return row === undefined ? undefined : operatorOf(row);
    },
  };
}
