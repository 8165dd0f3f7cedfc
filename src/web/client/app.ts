interface Session {
  id: number;
  name: string;
  active: boolean;
}

async function showSessions(): Promise<void> {
  const status = document.getElementById('status')!;
  const list = document.getElementById('sessions')!;
  try {
    const res = await fetch('/api/v1/sessions/');
    const body = (await res.json()) as { data: Session[] };
    list.replaceChildren(
      ...body.data.map((s) => {
        const li = document.createElement('li');
        li.textContent = s.active ? `${s.name} (active)` : s.name;
        if (s.active) li.className = 'active';
        return li;
      }),
    );
    status.textContent = `${body.data.length} session(s)`;
  } catch {
    status.textContent = 'The server did not answer.';
  }
}

void showSessions();
