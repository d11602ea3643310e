import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;

/**
 * Apache Curator's InterProcessMutex (Debian libcurator-recipes-java) behind
 * locktest's protocol (docs/protocol.md). All lock logic is the library's: an
 * ephemeral sequential znode under /locktest/KEY, held while the session
 * lives; the session timeout is the TTL. Curator does not revoke a lock whose
 * session expired, so a paused holder carries on. The owner is a name this
 * client makes up; nothing is fenced and nothing renews.
 */
public final class LockClient {
    private static CuratorFramework zk;
    private static final Map<String, InterProcessMutex> locks = new HashMap<>();
    private static int client, seq;

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String reply;
            try {
                reply = handle(line);
            } catch (Exception e) { // a ZooKeeper error: the outcome is unknown
                reply = "\"type\":\"error\",\"error\":" + str(e.toString());
            }
            System.out.println("{\"in_reply_to\":" + num(line, "id") + "," + reply + "}");
            System.out.flush();
        }
        if (zk != null) {
            zk.close();
        }
    }

    private static String handle(String req) throws Exception {
        String key = field(req, "key");
        switch (field(req, "type")) {
            case "init":
                client = (int) num(req, "client");
                String nodes = field(req, "nodes").replaceAll("[\\[\\]\" ]", "");
                int io = (int) num(req, "io_timeout_ms");
                zk = CuratorFrameworkFactory.newClient(nodes, (int) num(req, "ttl_ms"), io, new RetryOneTime(io));
                zk.start();
                if (!zk.blockUntilConnected((int) num(req, "timeout_ms"), TimeUnit.MILLISECONDS)) {
                    return fail("not connected to " + nodes);
                }
                System.err.println("c" + client + ": Curator InterProcessMutex on " + nodes);
                return "\"type\":\"ok\"";
            case "acquire":
                InterProcessMutex m = locks.computeIfAbsent(key, k -> new InterProcessMutex(zk, "/locktest/" + k));
                if (!m.acquire(num(req, "timeout_ms"), TimeUnit.MILLISECONDS)) {
                    return fail("not acquired before the deadline");
                }
                return "\"type\":\"ok\",\"owner\":" + str("c" + client + "-" + (++seq));
            case "release":
                InterProcessMutex held = locks.get(key);
                if (held == null || !held.isAcquiredInThisProcess()) {
                    return fail("not held by this client");
                }
                held.release();
                return "\"type\":\"ok\"";
            case "renew":
                return fail("InterProcessMutex has no renewal: the session keeps it");
            default:
                return fail("unknown request");
        }
    }

    private static String fail(String why) {
        return "\"type\":\"fail\",\"error\":" + str(why);
    }

    // The requests are flat JSON objects; nodes is the only array.
    private static String field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":(\"[^\"]*\"|\\[[^\\]]*\\]|-?[0-9]+)").matcher(json);
        if (!m.find()) {
            return "";
        }
        String v = m.group(1);
        return v.startsWith("\"") ? v.substring(1, v.length() - 1) : v;
    }

    private static long num(String json, String name) {
        return Long.parseLong(field(json, name));
    }

    private static String str(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replaceAll("[\\x00-\\x1f]", " ") + "\"";
    }
}
