/** The sign-in page. */
import { html } from "../domain/html.ts";
import { BASE, notice, page } from "./layout.ts";

export function signInPage(o: { formToken: string; error?: string | undefined; email?: string | undefined }): string {
  return page({
    title: "Sign in",
    body: html`${o.error === undefined ? "" : notice("error", o.error)}
      <form method="post" action="${BASE}/sign-in" class="stack narrow">
        <input type="hidden" name="_form" value="${o.formToken}" />
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autocomplete="username" required value="${o.email ?? ""}" />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required />
        <button type="submit">Sign in</button>
      </form>`,
  });
}
