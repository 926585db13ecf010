// The dashboard's page module: escaping, the boot data, and that the inline script is valid and builds no markup.
import { describe, expect, it } from "vitest";
import { CLIENT_SCRIPT } from "../../src/dashboard/client.ts";
import { dashboardPage, escapeHtml, jsonForScript, loginPage } from "../../src/dashboard/page.ts";

describe("dashboard page", () => {
  it("escapes text for HTML", () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&</a>`)).toBe(
      "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;",
    );
  });

  it("puts JSON in a script element without a way out of it, and parses back to the same value", () => {
    const value = {
      tenant: "acme",
      key: 'k</script><script>alert(1)</script><!-- \u2028\u2029 & "q"',
    };
    const text = jsonForScript(value);
    expect(text).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(text)).toEqual(value);
    const page = dashboardPage("n0nce", value);
    expect(page.match(/<\/script>/g)).toHaveLength(2); // the boot block's and the script's own
    expect(page).not.toContain("alert(1)</script>");
  });

  it("escapes the login message and carries no script", () => {
    const page = loginPage("n0nce", "<img src=x onerror=alert(1)>");
    expect(page).toContain("&lt;img src=x onerror=alert(1)&gt;");
    expect(page).not.toContain("<script");
    expect(page).toContain('<style nonce="n0nce">');
  });

  it("inlines a script that parses, loads nothing from elsewhere, and renders data only as text", () => {
    expect(() => new Function(CLIENT_SCRIPT)).not.toThrow();
    expect(CLIENT_SCRIPT).not.toMatch(
      /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/,
    );
    const page = dashboardPage("n0nce", { tenant: "acme", key: "k" });
    // Offline: no external script, stylesheet, font or image (only this origin's API, via fetch).
    expect(page).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(page).not.toMatch(/@import|url\(/);
  });
});
